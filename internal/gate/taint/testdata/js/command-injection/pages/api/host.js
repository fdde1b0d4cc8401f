// A Next.js API route.
import { exec } from "child_process";

export default function handler(req, res) {
  exec(`host ${req.query.name}`); // taint: command-injection
  res.status(200).json({ ok: true });
}
