x = r"\\"
y = b'''tri
ple'''
z = "unterminated
__import__("pkg.mod")
