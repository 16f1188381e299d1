# A module of the units backend's own folder, which is on the stubs' path.


def linear(x, scale, offset):
    return x * scale + offset
