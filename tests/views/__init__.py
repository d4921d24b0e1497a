"""The drawing components (widgets/views) and their JavaScript, headless."""
