package console

// DrawnForm is drawnForm for the package's outside tests.
var DrawnForm = drawnForm
