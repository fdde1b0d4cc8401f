// A check of the program's own, strict enough to be a sanitizer.
const db = require("./db");

function isValidId(id) {
  if (!/^[0-9]{1,12}$/.test(id)) {
    return false;
  }
  return true;
}

async function get(req, res) {
  const id = req.query.id;
  if (!isValidId(id)) {
    return res.status(400).end();
  }
  res.json(await db.query("SELECT * FROM items WHERE id = " + id));
}

module.exports = { get };
