package finding

// The subset of the SARIF 2.1.0 object model that Aster reads and writes.
// Field names follow the specification (OASIS SARIF 2.1.0, errata 01).

// SARIFSchemaURI is the final 2.1.0 schema that written logs reference.
const SARIFSchemaURI = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"

type sarifLog struct {
	Schema  string     `json:"$schema,omitempty"`
	Version string     `json:"version"`
	Runs    []sarifRun `json:"runs"`
}

type sarifRun struct {
	Tool               sarifTool                        `json:"tool"`
	Invocations        []sarifInvocation                `json:"invocations,omitempty"`
	OriginalURIBaseIDs map[string]sarifArtifactLocation `json:"originalUriBaseIds,omitempty"`
	Artifacts          []sarifArtifact                  `json:"artifacts,omitempty"`
	Results            []sarifResult                    `json:"results"`
	ColumnKind         string                           `json:"columnKind,omitempty"`
	Taxonomies         []sarifTaxonomy                  `json:"taxonomies,omitempty"`
	Properties         map[string]any                   `json:"properties,omitempty"`
}

// sarifTaxonomy is a run's taxonomy (gosec ships CWE as one), read only for
// its name: a toolComponent reference may name it by index.
type sarifTaxonomy struct {
	Name string `json:"name"`
}

type sarifTool struct {
	Driver     sarifComponent   `json:"driver"`
	Extensions []sarifComponent `json:"extensions,omitempty"`
}

type sarifComponent struct {
	Name            string      `json:"name"`
	Version         string      `json:"version,omitempty"`
	SemanticVersion string      `json:"semanticVersion,omitempty"`
	InformationURI  string      `json:"informationUri,omitempty"`
	Rules           []sarifRule `json:"rules,omitempty"`
}

type sarifRule struct {
	ID                   string                       `json:"id"`
	Name                 string                       `json:"name,omitempty"`
	ShortDescription     *sarifMessage                `json:"shortDescription,omitempty"`
	FullDescription      *sarifMessage                `json:"fullDescription,omitempty"`
	MessageStrings       map[string]sarifMessage      `json:"messageStrings,omitempty"`
	HelpURI              string                       `json:"helpUri,omitempty"`
	Help                 *sarifMessage                `json:"help,omitempty"`
	DefaultConfiguration *sarifReportingConfiguration `json:"defaultConfiguration,omitempty"`
	Relationships        []sarifRelationship          `json:"relationships,omitempty"`
	Properties           *sarifRuleProperties         `json:"properties,omitempty"`
}

// sarifRuleProperties are the rule properties Aster reads and writes: tags,
// where GitHub code scanning looks for "security" and "external/cwe/cwe-N".
type sarifRuleProperties struct {
	Tags []string `json:"tags,omitempty"`
}

// sarifRelationship links a rule to a taxon, e.g. gosec's G201 to CWE 89.
type sarifRelationship struct {
	Target sarifTaxonRef `json:"target"`
	Kinds  []string      `json:"kinds,omitempty"`
}

// sarifTaxonRef references a taxon of a taxonomy (a reportingDescriptorReference).
type sarifTaxonRef struct {
	ID            string                 `json:"id,omitempty"`
	ToolComponent *sarifToolComponentRef `json:"toolComponent,omitempty"`
}

type sarifToolComponentRef struct {
	Name  string `json:"name,omitempty"`
	Index *int   `json:"index,omitempty"`
}

type sarifReportingConfiguration struct {
	Level string `json:"level,omitempty"`
}

type sarifInvocation struct {
	ExecutionSuccessful        bool                `json:"executionSuccessful"`
	ExitCode                   *int                `json:"exitCode,omitempty"`
	ToolExecutionNotifications []sarifNotification `json:"toolExecutionNotifications,omitempty"`
	// Properties are read for the numbers Aster's taint engines write
	// ("files", "ms", "max_rss_kb", "judged"); any other shape is ignored.
	Properties map[string]any `json:"properties,omitempty"`
}

type sarifNotification struct {
	Level     string          `json:"level,omitempty"`
	Message   sarifMessage    `json:"message"`
	Locations []sarifLocation `json:"locations,omitempty"`
}

// sarifCodeFlow is a result's path through the code (a taint flow): one
// thread of locations, source first.
type sarifCodeFlow struct {
	ThreadFlows []sarifThreadFlow `json:"threadFlows"`
}

type sarifThreadFlow struct {
	Locations []sarifThreadFlowLocation `json:"locations"`
}

type sarifThreadFlowLocation struct {
	Location *sarifFlowLocation `json:"location,omitempty"`
}

// sarifFlowLocation is a location with its own message, as a thread flow's
// steps carry them.
type sarifFlowLocation struct {
	PhysicalLocation *sarifPhysicalLocation `json:"physicalLocation,omitempty"`
	Message          *sarifMessage          `json:"message,omitempty"`
}

type sarifArtifact struct {
	Location *sarifArtifactLocation `json:"location,omitempty"`
}

type sarifResult struct {
	RuleID              string             `json:"ruleId,omitempty"`
	RuleIndex           *int               `json:"ruleIndex,omitempty"`
	Rule                *sarifReportingRef `json:"rule,omitempty"`
	Kind                string             `json:"kind,omitempty"`
	Level               string             `json:"level,omitempty"`
	Message             sarifMessage       `json:"message"`
	Locations           []sarifLocation    `json:"locations,omitempty"`
	PartialFingerprints map[string]string  `json:"partialFingerprints,omitempty"`
	Fixes               []sarifFix         `json:"fixes,omitempty"`
	CodeFlows           []sarifCodeFlow    `json:"codeFlows,omitempty"`
	Taxa                []sarifTaxonRef    `json:"taxa,omitempty"`
	Suppressions        []sarifSuppression `json:"suppressions,omitempty"`
	Properties          map[string]any     `json:"properties,omitempty"`
}

type sarifReportingRef struct {
	ID    string `json:"id,omitempty"`
	Index *int   `json:"index,omitempty"`
}

type sarifMessage struct {
	Text      string   `json:"text,omitempty"`
	Markdown  string   `json:"markdown,omitempty"`
	ID        string   `json:"id,omitempty"`
	Arguments []string `json:"arguments,omitempty"`
}

type sarifLocation struct {
	PhysicalLocation *sarifPhysicalLocation `json:"physicalLocation,omitempty"`
}

type sarifPhysicalLocation struct {
	ArtifactLocation *sarifArtifactLocation `json:"artifactLocation,omitempty"`
	Region           *sarifRegion           `json:"region,omitempty"`
}

type sarifArtifactLocation struct {
	URI       string `json:"uri,omitempty"`
	URIBaseID string `json:"uriBaseId,omitempty"`
	Index     *int   `json:"index,omitempty"`
}

type sarifRegion struct {
	StartLine   int                   `json:"startLine,omitempty"`
	StartColumn int                   `json:"startColumn,omitempty"`
	EndLine     int                   `json:"endLine,omitempty"`
	EndColumn   int                   `json:"endColumn,omitempty"`
	Snippet     *sarifArtifactContent `json:"snippet,omitempty"`
}

type sarifArtifactContent struct {
	Text string `json:"text"`
}

type sarifFix struct {
	Description     *sarifMessage         `json:"description,omitempty"`
	ArtifactChanges []sarifArtifactChange `json:"artifactChanges"`
}

type sarifArtifactChange struct {
	ArtifactLocation sarifArtifactLocation `json:"artifactLocation"`
	Replacements     []sarifReplacement    `json:"replacements"`
}

type sarifReplacement struct {
	DeletedRegion   sarifRegion           `json:"deletedRegion"`
	InsertedContent *sarifArtifactContent `json:"insertedContent,omitempty"`
}

type sarifSuppression struct {
	Kind          string `json:"kind"`
	Status        string `json:"status,omitempty"`
	Justification string `json:"justification,omitempty"`
}

// sarifLevel reads a SARIF level; ok is false for an absent or unknown one.
func sarifLevel(s string) (Severity, bool) {
	switch s {
	case "error":
		return Error, true
	case "warning":
		return Warning, true
	case "note", "none":
		return Note, true
	}
	return "", false
}
