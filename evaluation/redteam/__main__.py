import sys

from evaluation.redteam import main

sys.exit(main())
