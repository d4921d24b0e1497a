# Each student's Jupyter server under the hub (JupyterLab and Voila as a server extension).
# Read from JUPYTER_CONFIG_PATH (hub/jupyterhub_config.py sets it), or copied by postBuild into
# the image's {sys.prefix}/etc/jupyter for Zero to JupyterHub. Two settings can be changed
# through the environment (the hub's Spawner.environment):
#   ATTENTION_KERNEL_CULL_S  a kernel with no open page, idle this long, is shut down (600)
#   ATTENTION_KERNEL_CULL_EVERY_S  how often the server looks (60)
import os

from widgets.classroom import IOPUB_TIMEOUT_S, TEMPLATE, TEMPLATE_ROOT

c = get_config()  # noqa: F821 - defined by the loader of Jupyter's config files

# Voila finds the classroom template on JUPYTER_PATH (read when the extension loads).
paths = os.environ.get("JUPYTER_PATH", "")
os.environ["JUPYTER_PATH"] = os.pathsep.join(filter(None, [str(TEMPLATE_ROOT), paths]))

# Voila as a server extension takes MathJax's address from the server's settings and, without
# them, loads MathJax from a CDN. The string "null" keeps the page on this machine (Python None
# breaks Notebook 7's page handler).
c.ServerApp.tornado_settings = {"mathjax_url": "null", "mathjax_config": "null"}

# A Voila tab closed without its unload request, or a notebook left open at the end of class,
# keeps its kernel: the server shuts down kernels that nobody is connected to and that are idle.
c.MappingKernelManager.cull_idle_timeout = int(os.environ.get("ATTENTION_KERNEL_CULL_S", "600"))
c.MappingKernelManager.cull_interval = int(os.environ.get("ATTENTION_KERNEL_CULL_EVERY_S", "60"))
c.MappingKernelManager.cull_connected = False
c.MappingKernelManager.cull_busy = False

# The classroom template (no Font Awesome from a CDN; the course's page scripts inlined).
c.VoilaConfiguration.template = TEMPLATE
c.VoilaConfiguration.theme = "light"
c.VoilaExporter.filters = {"course_script": "widgets.classroom.course_script"}
c.VoilaExecutor.iopub_timeout = IOPUB_TIMEOUT_S
c.VoilaExecutor.raise_on_iopub_timeout = True
