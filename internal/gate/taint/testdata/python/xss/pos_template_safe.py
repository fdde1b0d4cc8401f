from flask import Flask, render_template, request

app = Flask(__name__)


@app.route("/comment")
def comment():
    text = request.args.get("text", "")
    return render_template("comment.html", comment=text, title="Comments")
