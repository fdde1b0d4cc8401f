package finding

import (
	"strconv"
	"strings"
)

// maxCWE bounds a CWE number: MITRE's list ends well below it, and a larger
// value in analyzer output is garbage.
const maxCWE = 99999

// NormalizeCWE reads a CWE reference as analyzers spell it ("CWE-89",
// "cwe-89", "89", "external/cwe/cwe-89", "CWE-89: Improper ...") and returns
// it as "CWE-89", or "" when s names no CWE.
func NormalizeCWE(s string) string {
	s = strings.TrimSpace(s)
	if len(s) > 256 {
		return ""
	}
	low := strings.ToLower(s)
	low = strings.TrimPrefix(low, "external/cwe/")
	low = strings.TrimPrefix(low, "cwe-")
	low = strings.TrimPrefix(low, "cwe")
	end := 0
	for end < len(low) && low[end] >= '0' && low[end] <= '9' {
		end++
	}
	if end == 0 || end > 5 || (end < len(low) && low[end] != ':' && low[end] != ' ') {
		return ""
	}
	n, err := strconv.Atoi(low[:end])
	if err != nil || n <= 0 || n > maxCWE {
		return ""
	}
	return "CWE-" + strconv.Itoa(n)
}

// cweNumber returns the number of a normalised CWE ("CWE-89" → "89").
func cweNumber(cwe string) string { return strings.TrimPrefix(cwe, "CWE-") }
