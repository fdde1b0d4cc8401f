// A TypeScript service whose query text comes from the route.
import { Request, Response, Router } from "express";
import { DataSource } from "typeorm";

const dataSource = new DataSource({ type: "postgres" });

interface Filter {
  field: string;
  value: string;
}

function where(f: Filter): string {
  return `${f.field} = '${f.value}'`;
}

export const router = Router();

router.get("/products", async (req: Request, res: Response) => {
  const filter: Filter = { field: "category", value: req.query.category as string };
  const rows = await dataSource.query(`SELECT * FROM products WHERE ${where(filter)}`); // taint: sql-injection
  res.json(rows);
});
