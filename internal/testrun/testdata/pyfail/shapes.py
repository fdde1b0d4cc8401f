def area(w, h):
    return w * h + 1  # the bug the tests catch
