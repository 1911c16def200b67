# Lets the tests import the package from a plain checkout, without installing it.
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
