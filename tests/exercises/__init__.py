"""The checkers of each lesson (attention/exercises/lessonNN.py) against right and wrong answers;
the solutions; the records.
"""
