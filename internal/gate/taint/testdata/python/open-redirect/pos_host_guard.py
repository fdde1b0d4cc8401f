# Near misses of the guards: a check on another value, a guard whose result
# is never consulted, a prefix that leaves the host open.
from django.http import HttpResponseRedirect
from django.shortcuts import redirect
from django.utils.http import url_has_allowed_host_and_scheme


def wrong_value(request):
    target = request.GET.get("continue")
    fallback = request.GET.get("fallback")
    if not url_has_allowed_host_and_scheme(url=fallback, allowed_hosts={request.get_host()}):
        fallback = "/"
    return HttpResponseRedirect(target)  # taint: open-redirect


def unused_check(request):
    target = request.POST.get("continue", "")
    allowed = url_has_allowed_host_and_scheme(target, allowed_hosts=None)
    return HttpResponseRedirect(target)  # taint: open-redirect


def open_host(request):
    page = "https://"
    page += request.GET["site"]
    return redirect(page)  # taint: open-redirect
