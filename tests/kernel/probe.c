/* probe: what busybox cannot say honestly about a 9p mount, for the
 * kernel test (tests/kernel.rs). Built on the host with `gcc -static` and
 * run inside the guest.
 *
 * busybox `ls` and `find` print nothing when getdents64 fails, so they can
 * never be what checks a listing: every listing here is getdents64 itself,
 * and a failure prints the syscall's errno. Every refused operation prints
 * the errno the user sees, by name and number.
 *
 *   probe tree DIR            every entry below DIR, one "T path" a line (T
 *                             is d, f, l or o; path relative to DIR)
 *   probe count DIR           how many entries DIR lists (no . and ..)
 *   probe stat PATH           "ok", or the errno of stat(2)
 *   probe refuse OP PATH [TO] try OP (write creat rename chmod unlink mkdir
 *                             rmdir truncate) and print "ok" or its errno
 *   probe hold N MNT REF      open MNT/f00000 .. MNT/f<N-1> all at once,
 *                             read each whole and compare it with the same
 *                             name under REF, then close them all
 *   probe getfattr -d PATH    getfattr -d: every user.* attribute of PATH
 *                             (listxattr, then getxattr of each) as
 *                             NAME="VALUE", after a "# file:" line, and
 *                             nothing when it has none; a failed call
 *                             prints its errno and exits 1
 *   probe getfattr -n NAME PATH  getxattr of NAME: its value, or the
 *                             errno (getfattr's "No such attribute" is
 *                             ENODATA) and exit 1
 *   probe flock sh|ex PATH    flock(LOCK_SH or LOCK_EX | LOCK_NB) on PATH
 *                             opened read-only: "ok" or the errno, or
 *                             "HUNG" if the call has not returned in
 *                             FLOCK_SECONDS (then exit 1)
 *   probe put PATH TEXT       open PATH O_WRONLY (no O_TRUNC, no O_CREAT),
 *                             write TEXT and a newline, close: "ok" or the
 *                             failing call and its errno
 *   probe listen PATH         bind and listen on a unix socket at PATH,
 *                             detach (a new session, stdio closed) and
 *                             stay until killed: a session posting itself
 *   probe relay PATH DEV      bind and listen on a unix socket at PATH,
 *                             detach, accept one connection and copy
 *                             bytes both ways between it and the
 *                             character device DEV (a virtio serial port,
 *                             which the kernel's 9p client cannot write to
 *                             itself) until either side ends
 *   claude ...                (the probe run as "claude") pause until a
 *                             signal ends it: an agent process to move
 *
 * Exit status: 0 when the operation did what was asked (for refuse: the
 * call was attempted; the caller judges the errno), 1 otherwise.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <sys/un.h>
#include <sys/xattr.h>
#include <libgen.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <poll.h>
#include <unistd.h>
#include <time.h>
#include <unistd.h>

/* The getdents64 buffer: glibc's readdir uses 32 KiB too. */
#define DENTS_BYTES 32768
/* The longest path this probe builds. */
#define PATH_BYTES 4096

struct linux_dirent64 {
	unsigned long long d_ino;
	long long d_off;
	unsigned short d_reclen;
	unsigned char d_type;
	char d_name[];
};

/* "EINVAL (22) Invalid argument": the errno as a person reads it. */
static const char *errtext(int e)
{
	static char buf[256];
	const char *name = strerrorname_np(e);
	snprintf(buf, sizeof buf, "%s (%d) %s", name ? name : "E?", e, strerror(e));
	return buf;
}

/* Call fn(dir, name, d_type, arg) for every entry of dir but . and ..;
 * returns the count, or -1 after printing the failing call and its errno. */
static long each_entry(const char *dir, void (*fn)(const char *, const char *, int, void *), void *arg)
{
	/* One buffer a call, not a static one: tree recurses from fn. */
	char *buf = malloc(DENTS_BYTES);
	long count = 0;
	int fd = open(dir, O_RDONLY | O_DIRECTORY);
	if (!buf || fd < 0) {
		printf("ERROR open %s: %s\n", dir, errtext(errno));
		free(buf);
		return -1;
	}
	for (;;) {
		long n = syscall(SYS_getdents64, fd, buf, DENTS_BYTES);
		if (n < 0) {
			printf("ERROR getdents64 %s: %s after %ld entries\n", dir, errtext(errno), count);
			close(fd);
			free(buf);
			return -1;
		}
		if (n == 0)
			break;
		for (long at = 0; at < n;) {
			struct linux_dirent64 *d = (struct linux_dirent64 *)(buf + at);
			at += d->d_reclen;
			if (!strcmp(d->d_name, ".") || !strcmp(d->d_name, ".."))
				continue;
			count++;
			if (fn)
				fn(dir, d->d_name, d->d_type, arg);
		}
	}
	close(fd);
	free(buf);
	return count;
}

struct tree {
	const char *root;
	int failed;
};

static void tree_entry(const char *dir, const char *name, int type, void *arg)
{
	struct tree *t = arg;
	char path[PATH_BYTES];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	const char *rel = path + strlen(t->root) + 1;
	char kind = type == DT_DIR ? 'd' : type == DT_REG ? 'f' : type == DT_LNK ? 'l' : 'o';
	printf("%c %s\n", kind, rel);
	if (type == DT_DIR && each_entry(path, tree_entry, t) < 0)
		t->failed = 1;
}

static int cmd_tree(const char *dir)
{
	struct tree t = { dir, 0 };
	return each_entry(dir, tree_entry, &t) < 0 || t.failed;
}

static int cmd_count(const char *dir)
{
	long n = each_entry(dir, NULL, NULL);
	if (n < 0)
		return 1;
	printf("%ld\n", n);
	return 0;
}

static int cmd_stat(const char *path)
{
	struct stat st;
	if (stat(path, &st) < 0) {
		printf("%s\n", errtext(errno));
		return 1;
	}
	printf("ok\n");
	return 0;
}

static int cmd_refuse(const char *op, const char *path, const char *to)
{
	int rc = -1, fd;
	if (!strcmp(op, "write")) {
		fd = open(path, O_WRONLY | O_APPEND);
		if (fd >= 0) {
			rc = write(fd, "x", 1) == 1 ? 0 : -1;
			if (close(fd) < 0)
				rc = -1;
		}
	} else if (!strcmp(op, "creat")) {
		fd = creat(path, 0644);
		rc = fd < 0 ? -1 : close(fd);
	} else if (!strcmp(op, "rename") && to) {
		rc = rename(path, to);
	} else if (!strcmp(op, "chmod")) {
		rc = chmod(path, 0777);
	} else if (!strcmp(op, "unlink")) {
		rc = unlink(path);
	} else if (!strcmp(op, "mkdir")) {
		rc = mkdir(path, 0755);
	} else if (!strcmp(op, "rmdir")) {
		rc = rmdir(path);
	} else if (!strcmp(op, "truncate")) {
		rc = truncate(path, 0);
	} else {
		printf("usage: probe refuse write|creat|rename|chmod|unlink|mkdir|rmdir|truncate PATH [TO]\n");
		return 1;
	}
	printf("%s\n", rc == 0 ? "ok" : errtext(errno));
	return 0;
}

/* Read fd from offset 0 to its end into buf (at most cap bytes); the
 * length, or -1 (errno set), or -2 when the file is larger than cap. */
static long read_whole(int fd, char *buf, long cap)
{
	long got = 0;
	for (;;) {
		ssize_t n = pread(fd, buf + got, cap - got, got);
		if (n < 0)
			return -1;
		if (n == 0)
			return got;
		got += n;
		if (got == cap)
			return -2;
	}
}

/* Seconds on the monotonic clock. */
static double seconds(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* The largest file hold compares; the test's files are a few bytes. */
#define HOLD_FILE_BYTES 65536

static int cmd_hold(long n, const char *mnt, const char *ref)
{
	static char got[HOLD_FILE_BYTES], want[HOLD_FILE_BYTES];
	char path[PATH_BYTES];
	int *fds = calloc(n, sizeof *fds);
	/* Root may raise its own hard limit; the default soft one is 1024. */
	struct rlimit rl = { n + 64, n + 64 };
	if (!fds || setrlimit(RLIMIT_NOFILE, &rl) < 0) {
		printf("ERROR setrlimit %ld: %s\n", n + 64, errtext(errno));
		return 1;
	}
	double t0 = seconds();
	for (long i = 0; i < n; i++) {
		snprintf(path, sizeof path, "%s/f%05ld", mnt, i);
		fds[i] = open(path, O_RDONLY);
		if (fds[i] < 0) {
			printf("ERROR open %s with %ld held: %s\n", path, i, errtext(errno));
			return 1;
		}
	}
	double t1 = seconds();
	for (long i = 0; i < n; i++) {
		snprintf(path, sizeof path, "%s/f%05ld", ref, i);
		int rfd = open(path, O_RDONLY);
		long w = rfd < 0 ? -1 : read_whole(rfd, want, sizeof want);
		long g = read_whole(fds[i], got, sizeof got);
		if (rfd >= 0)
			close(rfd);
		if (w < 0 || g < 0) {
			printf("ERROR read f%05ld (%s side): %s\n", i, w < 0 ? "fixture" : "mount", errtext(errno));
			return 1;
		}
		if (g != w || memcmp(got, want, w)) {
			printf("ERROR f%05ld: %ld bytes read through the mount differ from the fixture's %ld\n", i, g, w);
			return 1;
		}
	}
	double t2 = seconds();
	for (long i = 0; i < n; i++) {
		if (close(fds[i]) < 0) {
			printf("ERROR close f%05ld: %s\n", i, errtext(errno));
			return 1;
		}
	}
	double t3 = seconds();
	printf("held %ld open, all read equal, all closed; opened in %.2f s, read in %.2f s, closed in %.2f s\n", n,
	       t1 - t0, t2 - t1, t3 - t2);
	return 0;
}

/* The largest attribute list or value getfattr is asked for here. */
#define XATTR_BYTES 65536

static int cmd_getfattr_dump(const char *path)
{
	static char names[XATTR_BYTES], value[XATTR_BYTES];
	ssize_t n = listxattr(path, names, sizeof names);
	if (n < 0) {
		printf("%s: listxattr: %s\n", path, errtext(errno));
		return 1;
	}
	int header = 0;
	for (ssize_t at = 0; at < n; at += strlen(names + at) + 1) {
		const char *name = names + at;
		if (strncmp(name, "user.", 5))
			continue;
		ssize_t v = getxattr(path, name, value, sizeof value - 1);
		if (v < 0) {
			printf("%s: getxattr %s: %s\n", path, name, errtext(errno));
			return 1;
		}
		value[v] = 0;
		if (!header++)
			printf("# file: %s\n", path);
		printf("%s=\"%s\"\n", name, value);
	}
	return 0;
}

static int cmd_getfattr_name(const char *name, const char *path)
{
	static char value[XATTR_BYTES];
	ssize_t v = getxattr(path, name, value, sizeof value - 1);
	if (v < 0) {
		printf("%s: %s: %s\n", path, name, errtext(errno));
		return 1;
	}
	value[v] = 0;
	printf("%s=\"%s\"\n", name, value);
	return 0;
}

/* A lock the server neither grants nor refuses must not hang the test. */
#define FLOCK_SECONDS 10

static void flock_hung(int sig)
{
	(void)sig;
	static const char hung[] = "HUNG: flock had not returned after 10 s\n";
	if (write(1, hung, sizeof hung - 1) < 0)
		_exit(2);
	_exit(1);
}

static int cmd_flock(const char *kind, const char *path)
{
	int op = !strcmp(kind, "ex") ? LOCK_EX : LOCK_SH;
	int fd = open(path, O_RDONLY);
	if (fd < 0) {
		printf("ERROR open %s: %s\n", path, errtext(errno));
		return 1;
	}
	signal(SIGALRM, flock_hung);
	alarm(FLOCK_SECONDS);
	int rc = flock(fd, op | LOCK_NB);
	int e = errno;
	alarm(0);
	printf("%s\n", rc == 0 ? "ok" : errtext(e));
	if (rc == 0 && flock(fd, LOCK_UN) < 0) {
		printf("ERROR unlock: %s\n", errtext(errno));
		return 1;
	}
	if (close(fd) < 0) {
		printf("ERROR close: %s\n", errtext(errno));
		return 1;
	}
	return 0;
}

static int cmd_put(const char *path, const char *text)
{
	char line[PATH_BYTES];
	int n = snprintf(line, sizeof line, "%s\n", text);
	int fd = open(path, O_WRONLY);
	if (fd < 0) {
		printf("open: %s\n", errtext(errno));
		return 0;
	}
	if (write(fd, line, n) != n) {
		printf("write: %s\n", errtext(errno));
		close(fd);
		return 0;
	}
	printf("%s\n", close(fd) < 0 ? errtext(errno) : "ok");
	return 0;
}

/* A unix socket bound and listening at `path`, its fd; -1 (said) if not. */
static int listening(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);
	if (fd < 0 || strlen(path) >= sizeof sa.sun_path) {
		printf("ERROR socket %s: %s\n", path, errtext(errno));
		return -1;
	}
	strcpy(sa.sun_path, path);
	if (bind(fd, (struct sockaddr *)&sa, sizeof sa) < 0 || listen(fd, 8) < 0) {
		printf("ERROR bind %s: %s\n", path, errtext(errno));
		return -1;
	}
	return fd;
}

/* Go on in a child of a new session, stdio on /dev/null; the parent
 * exits 0 (the caller's shell goes on). */
static void detach(void)
{
	if (fork() > 0)
		_exit(0);
	setsid();
	int null = open("/dev/null", O_RDWR);
	for (int i = 0; i < 3; i++)
		dup2(null, i);
}

static int cmd_listen(const char *path)
{
	if (listening(path) < 0)
		return 1;
	detach();
	for (;;)
		pause();
}

/* Copy what `from` has to `to`; 0 at its end or on an error. */
static int pass_on(int from, int to)
{
	char buf[65536];
	ssize_t n = read(from, buf, sizeof buf);
	if (n <= 0)
		return 0;
	for (ssize_t off = 0; off < n;) {
		ssize_t w = write(to, buf + off, n - off);
		if (w <= 0)
			return 0;
		off += w;
	}
	return 1;
}

static int cmd_relay(const char *path, const char *dev)
{
	int port = open(dev, O_RDWR);
	if (port < 0) {
		printf("ERROR open %s: %s\n", dev, errtext(errno));
		return 1;
	}
	int fd = listening(path);
	if (fd < 0)
		return 1;
	detach();
	int conn = accept(fd, NULL, NULL);
	if (conn < 0)
		_exit(1);
	struct pollfd p[2] = { { .fd = conn, .events = POLLIN }, { .fd = port, .events = POLLIN } };
	for (;;) {
		if (poll(p, 2, -1) < 0)
			_exit(1);
		if ((p[0].revents & (POLLIN | POLLHUP | POLLERR)) && !pass_on(conn, port))
			_exit(0);
		if ((p[1].revents & (POLLIN | POLLHUP | POLLERR)) && !pass_on(port, conn))
			_exit(0);
	}
}

/* probe now: CLOCK_MONOTONIC in seconds to the microsecond (/proc/uptime
 * counts hundredths, 3% of a 0.3 s bench round). */
static int cmd_now(void)
{
	struct timespec ts;
	if (clock_gettime(CLOCK_MONOTONIC, &ts) < 0) {
		printf("ERROR clock_gettime: %s\n", errtext(errno));
		return 1;
	}
	printf("%lld.%06ld\n", (long long)ts.tv_sec, ts.tv_nsec / 1000);
	return 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!strcmp(basename(argv[0]), "claude")) {
		for (;;)
			pause();
	}
	if (argc == 3 && !strcmp(argv[1], "tree"))
		return cmd_tree(argv[2]);
	if (argc == 3 && !strcmp(argv[1], "count"))
		return cmd_count(argv[2]);
	if (argc == 3 && !strcmp(argv[1], "stat"))
		return cmd_stat(argv[2]);
	if ((argc == 4 || argc == 5) && !strcmp(argv[1], "refuse"))
		return cmd_refuse(argv[2], argv[3], argc == 5 ? argv[4] : NULL);
	if (argc == 5 && !strcmp(argv[1], "hold"))
		return cmd_hold(atol(argv[2]), argv[3], argv[4]);
	if (argc == 4 && !strcmp(argv[1], "getfattr") && !strcmp(argv[2], "-d"))
		return cmd_getfattr_dump(argv[3]);
	if (argc == 5 && !strcmp(argv[1], "getfattr") && !strcmp(argv[2], "-n"))
		return cmd_getfattr_name(argv[3], argv[4]);
	if (argc == 4 && !strcmp(argv[1], "flock") && (!strcmp(argv[2], "sh") || !strcmp(argv[2], "ex")))
		return cmd_flock(argv[2], argv[3]);
	if (argc == 4 && !strcmp(argv[1], "put"))
		return cmd_put(argv[2], argv[3]);
	if (argc == 3 && !strcmp(argv[1], "listen"))
		return cmd_listen(argv[2]);
	if (argc == 4 && !strcmp(argv[1], "relay"))
		return cmd_relay(argv[2], argv[3]);
	if (argc == 2 && !strcmp(argv[1], "now"))
		return cmd_now();
	fprintf(stderr, "usage: probe tree DIR | count DIR | stat PATH | refuse OP PATH [TO] | hold N MNT REF\n"
			"       | getfattr -d PATH | getfattr -n NAME PATH | flock sh|ex PATH | put PATH TEXT\n"
			"       | listen PATH | relay PATH DEV | now\n");
	return 2;
}
