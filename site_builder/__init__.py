"""The course's static site: every lesson executed and rendered to HTML that works offline.

`make site` (or `python -m site_builder`) writes site/ (git-ignored); see build.py.
"""
