package transform

// Unexported helpers the external test package (transform_test) uses.

// PythonJSONForTest is pythonJSON: json.dumps as Python writes it.
var PythonJSONForTest = pythonJSON
