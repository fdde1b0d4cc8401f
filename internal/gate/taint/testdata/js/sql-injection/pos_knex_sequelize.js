// Raw query builders of the ORMs, given strings built from input.
const knex = require("knex")({ client: "pg" });
const { Sequelize } = require("sequelize");

const sequelize = new Sequelize("sqlite::memory:");

async function report(req, res) {
  const sort = req.query.sort;
  const rows = await knex("items").select("*").orderByRaw(sort + " desc"); // taint: sql-injection
  const total = await sequelize.query("SELECT count(*) FROM items WHERE owner = '" + req.query.owner + "'"); // taint: sql-injection
  res.json({ rows, total });
}

module.exports = { report };
