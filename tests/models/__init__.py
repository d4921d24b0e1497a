"""The models on the core: the toy seq2seq and tasks, MiniLM and SmolLM2, hooks, the debugger,
interventions.
"""
