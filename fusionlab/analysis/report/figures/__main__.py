"""The figure table of docs/outputs.md, from the figure records: paste it between its
`figures` markers (`python -m fusionlab.analysis.report.figures`)."""
from fusionlab.analysis.report.figures import docs_table

print(docs_table())
