pytest_plugins = ["pkg.fixtures", 'other']
"""doc with pkg.mod"""
# "commented.out"
