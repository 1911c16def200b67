import os
import a.b as c, d
from x.y import (p,
    q as r)
from . import z
from ..pkg.mod import *
