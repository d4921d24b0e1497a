"""One file per explorer stem: its pure function (attention/explore) and its widget
(widgets/explorers); the registry; every explorer's accessible names and Chinese.
"""
