# tests/env.sh: how every test starts the program (sourced by tests/lib.sh and tests/t_predict.sh).
# The suite starts the program about 2,500 times; what Open MPI and OpenBLAS do at each start,
# not the work, was most of its time (a failing singleton took 0.68 s, 0.18-0.32 s with these):
# - ob1, the messaging layer Open MPI picks on this machine anyway: without naming it, every
#   process also loads the Omni-Path library, whose constructor spins for 0.2 s to calibrate;
# - a process started without mpirun (a singleton) starts no Open MPI daemon (orted) beside it;
# - OpenBLAS at 1 thread: where the variable is unset, wildcpu executes itself again to set it,
#   loading every library twice (t_data_memory tests that path with the variable unset).
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_pml=${OMPI_MCA_pml:-ob1} OMPI_MCA_ess_singleton_isolated=1
export OPENBLAS_NUM_THREADS=1
