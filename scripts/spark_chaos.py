"""``spark-submit`` entry point of ``python -m chaos`` (spark-submit runs a file, not a module, and a
file inside the ``chaos`` package would put that package's folder first on ``sys.path``)::

    spark-submit --master spark://HOST:7077 scripts/spark_chaos.py run --master spark://HOST:7077 --seed 7
"""

import sys

from chaos.__main__ import main

if __name__ == "__main__":
    sys.exit(main())
