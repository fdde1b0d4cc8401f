import hashlib
from hashlib import md5


def check(user, password):
    # ruleid: aster.python.weak-hash
    return user.pwd_hash == md5(password.encode("utf-8")).hexdigest()


def store(pwd):
    # ruleid: aster.python.weak-hash
    return hashlib.sha1(pwd.encode()).hexdigest()


def token_id(token):
    # ruleid: aster.python.weak-hash
    return hashlib.new("md5", token).hexdigest()
