import { Pool } from "pg";

const pool = new Pool();
const TABLE = "users";

export async function byName(name: string) {
    return pool.query("SELECT * FROM users WHERE name = $1", [name]);
}

export function label(name: string) {
    const text = `SELECT ${name} FROM the menu`;
    console.log(text);
    return `select a plan from ${name}`;
}

export async function count() {
    return pool.query("SELECT count(*) FROM " + "users");
}
