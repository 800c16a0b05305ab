package ops

// Version is the loci version get_capabilities reports; the CLI sets it
// from its build version at start-up ("dev" in tests).
var Version = "dev"

// QueryLanguages are the structured query languages the server answers,
// beyond search_notes' own syntax, as get_capabilities reports them. It is
// empty until a query operation registers its languages here (in its
// package's init).
var QueryLanguages = []string{}
