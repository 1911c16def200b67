"""To-do list with due dates."""
