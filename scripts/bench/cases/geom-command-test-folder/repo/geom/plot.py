"""Drawing (optional: pip install geom[plot])."""
import matplotlib.pyplot as plt


def draw(width, height):
    plt.gca().add_patch(plt.Rectangle((0, 0), width, height))
