"""Rectangles and squares."""


def area(width, height):
    return width * height


def perimeter(width, height):
    return width + height


def square_area(side):
    return area(side, side)
