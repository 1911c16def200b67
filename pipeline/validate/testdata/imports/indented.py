def f():
    from calc.core import add  # late
    import json; import calc
x = "import notreal"
from \
  calc import sub
