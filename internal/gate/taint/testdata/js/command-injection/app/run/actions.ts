"use server";
// A Next.js server action: its arguments come from the client.
import { execSync } from "child_process";

export async function lookup(formData: FormData) {
  const name = formData.get("name");
  execSync(`host ${name}`); // taint: command-injection
}
