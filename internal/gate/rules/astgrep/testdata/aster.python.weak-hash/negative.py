import hashlib


def etag(body):
    return hashlib.md5(body).hexdigest()


def checksum(password_file_bytes):
    return hashlib.md5(password_file_bytes, usedforsecurity=False).hexdigest()


def store(password, salt):
    return hashlib.scrypt(password.encode(), salt=salt, n=2**14, r=8, p=1)


def strong(token):
    return hashlib.sha256(token).hexdigest()
