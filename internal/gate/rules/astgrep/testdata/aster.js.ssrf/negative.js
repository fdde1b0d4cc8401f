const axios = require("axios");

const API = "https://api.example.com";

async function quote(req, res) {
    const { data } = await axios.get(API + "/quote", { params: { symbol: req.query.symbol } });
    res.json(data);
}

async function local(req, res) {
    const r = await fetch("/api/items/" + req.params.id);
    res.json(await r.json());
}

function header(req) {
    return req.get("host");
}

async function mixed(req, res, server) {
    const name = req.query.name;
    const r = await fetch(server.url);
    res.json({ name, body: await r.text() });
}
