from django.db import connection
from django.http import JsonResponse

from .models import Book


def search(request):
    term = request.GET["term"]
    books = Book.objects.raw("SELECT * FROM books WHERE title LIKE '%" + term + "%'")  # taint: sql-injection
    return JsonResponse({"n": len(list(books))})


class Repo:
    def __init__(self, conn):
        self.conn = conn

    def by_owner(self, owner):
        with self.conn.cursor() as cur:
            cur.execute(f"SELECT id FROM repos WHERE owner = '{owner}'")  # taint: sql-injection
            return cur.fetchall()


def repos(request, owner):
    return JsonResponse({"ids": Repo(connection).by_owner(owner)})
