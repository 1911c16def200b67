from ... import
import
from .. import (
