from flask import redirect, request, url_for


def after_login():
    return redirect(url_for("index"))


def fixed():
    return redirect("/home")


def checked(is_safe):
    nxt = request.args.get("next")
    if not is_safe(nxt):
        nxt = "/"
    return redirect(url_for("page", name="x"))


async def local(request):
    course_id = request.match_info["id"]
    raise HTTPFound(f"/courses/{course_id}")
