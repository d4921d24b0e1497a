"""Reference solutions, one module per lesson, named as its checkers' module: lesson N's checkers
are in `attention.exercises.lessonNN`, their solutions in `attention.exercises.solutions.lessonNN`.
Read them after you have tried; each lesson shows the same code in hidden cells tagged `solution`.
"""
