"""The README's figure table, from the figure records: paste it between the README's
`figures` markers (`python -m fusionlab.analysis.report.figures`)."""
from fusionlab.analysis.report.figures import readme_table

print(readme_table())
