# Redirects behind Django's own host checks, a fixed site prefix or a
# fixed path followed by more pieces: the input cannot choose the host.
from django.http import HttpResponse, HttpResponseRedirect
from django.shortcuts import redirect
from django.utils.http import url_has_allowed_host_and_scheme


def after_login(request):
    target = request.GET.get("continue")
    if (target or request.method == "HEAD") and not url_has_allowed_host_and_scheme(url=target, allowed_hosts={request.get_host()}):
        target = "/home"
    return HttpResponseRedirect(target) if target else HttpResponse(status=204)


def after_logout(request):
    target = request.POST.get("continue", "")
    allowed = url_has_allowed_host_and_scheme(target, allowed_hosts=None)
    if allowed:
        return HttpResponseRedirect(target)
    return HttpResponseRedirect("/")


def docs_page(request):
    page = "https://docs.example.org/"
    page += request.GET["topic"]
    return redirect(page)


def board(request, board_id, item_id):
    return redirect("/boards/" + board_id + "/items/" + item_id)
