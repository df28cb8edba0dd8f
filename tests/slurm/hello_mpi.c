/* hello_mpi: the MPI program of tests/slurm/selftest.
 *
 *   hello_mpi              every rank prints
 *                          "hello rank R of N host H sum S SLURM_NTASKS=T SLURM_PROCID=P"
 *                          where S is the sum of all ranks (an MPI_Allreduce, so the ranks
 *                          really share one communicator and are not N singletons)
 *   hello_mpi --kill-rank R  rank R SIGKILLs itself after MPI_Init while the others wait in
 *                          MPI_Barrier for it forever: only the launcher can end the step
 */
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    int rank, size, len, sum = 0, kill_rank = -1;
    char host[MPI_MAX_PROCESSOR_NAME];
    const char *ntasks = getenv("SLURM_NTASKS");
    const char *procid = getenv("SLURM_PROCID");

    if (argc == 3 && strcmp(argv[1], "--kill-rank") == 0) kill_rank = atoi(argv[2]);
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (kill_rank >= 0) {
        printf("rank %d of %d: %s\n", rank, size, rank == kill_rank ? "SIGKILL" : "MPI_Barrier");
        fflush(stdout);
        if (rank == kill_rank) raise(SIGKILL);
        MPI_Barrier(MPI_COMM_WORLD);
        printf("rank %d: MPI_Barrier returned\n", rank);
        MPI_Finalize();
        return 0;
    }
    MPI_Get_processor_name(host, &len);
    MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    printf("hello rank %d of %d host %s sum %d SLURM_NTASKS=%s SLURM_PROCID=%s\n", rank, size, host,
           sum, ntasks ? ntasks : "", procid ? procid : "");
    fflush(stdout);
    MPI_Finalize();
    return 0;
}
