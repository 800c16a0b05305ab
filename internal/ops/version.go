package ops

// Version is the loci version get_capabilities reports; the CLI sets it
// from its build version at start-up ("dev" in tests).
var Version = "dev"
