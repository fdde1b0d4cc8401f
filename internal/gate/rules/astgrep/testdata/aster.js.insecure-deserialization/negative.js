const yaml = require("js-yaml");

function profile(req, res) {
    res.json(JSON.parse(req.cookies.profile));
}

function load(text) {
    return yaml.load(text);
}

function decode(codec, data) {
    return codec.deserialize(data);
}
