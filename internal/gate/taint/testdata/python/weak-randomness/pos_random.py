import random
import string


def make_reset_token():
    return "".join(random.choice(string.ascii_letters) for _ in range(32))  # taint: weak-randomness


def new_user(db, name):
    password = str(random.randint(100000, 999999))  # taint: weak-randomness
    db.insert(name, password)


def session_id():
    sid = random.getrandbits(64)  # taint: weak-randomness
    return sid
