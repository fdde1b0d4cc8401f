// A GraphQL resolver building SQL from its arguments.
const { Pool } = require("pg");

const pool = new Pool();

const resolvers = {
  Query: {
    user: async (parent, args) => {
      const r = await pool.query("SELECT * FROM users WHERE name = '" + args.name + "'"); // taint: sql-injection
      return r.rows[0];
    },
  },
};

module.exports = { resolvers };
