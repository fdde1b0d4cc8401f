// A check of the program's own that lets SQL through: any 1 to 40 characters.
const db = require("./db");

function validateName(name) {
  if (!/^.{1,40}$/.test(name)) {
    return false;
  }
  return true;
}

async function find(req, res) {
  const name = req.query.name;
  if (validateName(name)) {
    res.json(await db.query("SELECT * FROM users WHERE name = '" + name + "'")); // taint: sql-injection
  }
}

module.exports = { find };
