const fs = require("fs");
const path = require("path");

function download(req, res) {
    res.sendFile(req.query.name, { root: path.join(__dirname, "files") });
}

function config(req, res) {
    fs.readFile(path.join(__dirname, "config.json"), "utf8", (err, text) => res.json({ text, user: req.user }));
}
