const fs = require("fs");
const path = require("path");

function download(req, res) {
    // ruleid: aster.js.path-traversal
    res.download(path.join(__dirname, "files", req.query.name));
}

function read(req, res) {
    const file = req.params.file;
    // ruleid: aster.js.path-traversal
    fs.readFile("/srv/data/" + file, "utf8", (err, text) => res.send(text));
}

function show(req, res) {
    // ruleid: aster.js.path-traversal
    res.sendFile(path.resolve("uploads", req.body.path));
}
