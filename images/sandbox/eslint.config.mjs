// Aster's ESLint configuration, shipped in the sandbox image at
// /opt/aster/eslint/eslint.config.mjs. It is the only configuration ESLint
// loads there: the gate passes it with --config, so a repository's own
// eslint.config.* (code that could import any plugin) is never read, and
// --no-inline-config keeps comments in the reviewed code from turning rules
// off. It enables security rules only: eslint-plugin-security's recommended
// set, less detect-object-injection (it flags nearly every obj[key]), and the
// core rules against evaluating strings as code.
import security from "eslint-plugin-security";

export default [
	{
		linterOptions: { noInlineConfig: true, reportUnusedDisableDirectives: "off" },
	},
	{
		files: ["**/*.js", "**/*.cjs", "**/*.mjs", "**/*.jsx"],
		plugins: { security },
		languageOptions: {
			ecmaVersion: "latest",
			parserOptions: { ecmaFeatures: { jsx: true } },
		},
		rules: {
			...security.configs.recommended.rules,
			"security/detect-object-injection": "off",
			"security/detect-eval-with-expression": "error",
			"no-eval": "error",
			"no-implied-eval": "error",
			"no-new-func": "error",
		},
	},
];
