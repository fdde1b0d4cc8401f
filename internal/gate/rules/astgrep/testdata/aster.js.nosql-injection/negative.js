async function login(req, res, users) {
    const user = await users.findOne({ username: String(req.body.username) });
    res.json(user);
}

function byName(col) {
    return col.find({ $where: "this.a > this.b" });
}

function list(arr, req) {
    return arr.find((x) => x.id === req.params.id);
}
