# packaging/packaging.mk: the Debian and RPM packages; included by the
# Makefile, whose VERSION is the packages' version.
#
#   make deb             build/packages/deb/: libapache2-mod-svc, svc-tools and
#                        svc-agent
#                        (dpkg-buildpackage in a clean copy of the tree), lintian
#   make rpm             build/packages/rpm/: mod_svc for Fedora / RHEL 9, built
#                        here with rpmbuild --nodeps to check it (rpmlint)
#   make srpm            the source RPM, to build for real on Fedora / RHEL (mock)
#   make test-packages   install, use, upgrade and remove them in a clean
#                        Debian 12 root; check the RPM (tools/test-packages.sh)
#
# DEB_REVISION and RPM_RELEASE number the packaging of one VERSION;
# PKG_OUT is where the packages go. The tools: tools/deps.sh --group pkg.

DEB_REVISION ?= 1
RPM_RELEASE  ?= 1
PKG_OUT      ?= $(or $(BUILD),build)/packages

.PHONY: deb rpm srpm test-packages

deb:
	VERSION='$(VERSION)' DEB_REVISION='$(DEB_REVISION)' PKG_OUT='$(PKG_OUT)/deb' \
	    packaging/build-deb.sh

rpm:
	VERSION='$(VERSION)' RPM_RELEASE='$(RPM_RELEASE)' PKG_OUT='$(PKG_OUT)/rpm' \
	    packaging/build-rpm.sh binary

srpm:
	VERSION='$(VERSION)' RPM_RELEASE='$(RPM_RELEASE)' PKG_OUT='$(PKG_OUT)/rpm' \
	    packaging/build-rpm.sh source

test-packages:
	tools/test-packages.sh

# The version, for scripts (tools/test-packages.sh).
.PHONY: print-version
print-version:
	@echo '$(VERSION)'
