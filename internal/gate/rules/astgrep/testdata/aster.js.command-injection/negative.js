const { execFile, spawn, exec } = require("child_process");

function ping(req, res) {
    execFile("ping", ["-c", "1", req.query.host], (err, out) => res.send(out));
}

function list(dir) {
    spawn("ls", ["-l", dir]);
    exec("git status --short");
}

function match(text, name) {
    return /ab+c/.exec(text + name);
}
