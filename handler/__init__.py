"""The translation runtime. Importing the package first notes when the handler's imports began (cold-start report)."""

import time

IMPORT_BEGAN = time.perf_counter()
# Linux: seconds since boot, the clock /proc/self/stat's process start time is measured on
IMPORT_BEGAN_SINCE_BOOT = time.clock_gettime(time.CLOCK_BOOTTIME) if hasattr(time, "CLOCK_BOOTTIME") else None
