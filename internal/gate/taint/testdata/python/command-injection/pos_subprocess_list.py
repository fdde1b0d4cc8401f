import shlex
import subprocess

from django.http import HttpResponse


def tool(request):
    line = request.POST.get("cmd", "")
    args = shlex.split(line)
    subprocess.run(args)  # taint: command-injection
    prog = request.GET["prog"]
    subprocess.Popen([prog, "--version"])  # taint: command-injection
    subprocess.call(["sh", "-c", "echo " + line])  # taint: command-injection
    return HttpResponse("ok")
