import sys

from goldenal.cli import main

sys.exit(main())
