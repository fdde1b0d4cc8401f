# A snippet that uses the standard pickle module without importing it in
# this file: the name still stands for the module.
def restore(request):
    state = request.cookies.get("state")
    return pickle.loads(state)  # taint: insecure-deserialization
