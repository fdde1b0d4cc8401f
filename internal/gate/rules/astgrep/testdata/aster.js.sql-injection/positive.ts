import { Pool } from "pg";

const pool = new Pool();

export async function byName(name: string) {
    // ruleid: aster.js.sql-injection
    return pool.query(`SELECT * FROM users WHERE name = '${name}'`);
}

export async function remove(db: any, id: string) {
    // ruleid: aster.js.sql-injection
    await db.execute("DELETE FROM sessions WHERE id = " + id);
}

export async function search(conn: any, term: string) {
    // ruleid: aster.js.sql-injection
    const sql = `SELECT id FROM items WHERE title LIKE '%${term}%'`;
    const [rows] = await conn.query(sql);
    return rows;
}

export async function quoted(db: any, name: string) {
    // ruleid: aster.js.sql-injection
    return db.query("SELECT * FROM users WHERE name = '" + name + "'");
}
